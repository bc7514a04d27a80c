package ingest

import "errors"

func decodeJaegerJSON(s *source, set *Set, w *warnings) error {
	return s.errAt(0, errors.New("jaeger json: not yet"))
}

func decodeJaegerProto(s *source, set *Set, w *warnings) error {
	return s.errAt(0, errors.New("jaeger proto: not yet"))
}
