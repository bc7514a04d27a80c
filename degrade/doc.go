// Package degrade will define the fault models replay applies: slow shards,
// hot partitions, packet loss, saturated pools, outages, error rates and
// added latency, and parse their specs.
package degrade
