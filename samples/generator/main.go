package main

import (
	_ "github.com/avast/retry-go/v4"
	_ "github.com/cenkalti/backoff/v5"
	_ "github.com/hashicorp/go-retryablehttp"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/translator/jaeger"
	_ "go.opentelemetry.io/collector/pdata/ptrace"
	_ "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/sdk/trace"
)

func main() {}
