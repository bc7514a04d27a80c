package degrade

import (
	"math/rand/v2"
	"testing"
)

// benchSchedule is a busy schedule: several faults on the service asked
// about and others elsewhere.
func benchSchedule(b *testing.B) Schedule {
	return mustParseAll(b,
		"slow-shard:svc=db,at=10s,for=30s,shards=16,shard=3",
		"hot-partition:svc=db,at=20s,for=30s,zipf=1.2",
		"packet-loss:edge=api->db,at=20s,for=10s,p=0.2",
		"error-rate:svc=db,at=0s,for=0s,p=0.01",
		"db-pool:svc=db,at=15s,for=10s,k=4",
		"outage:svc=cache,at=5s,for=5s",
		"latency:svc=auth,at=5s,for=50s,add=20ms",
	)
}

func BenchmarkEffect(b *testing.B) {
	s := benchSchedule(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = s.Effect("api", "db", i&15, float64(i%60))
	}
}

func BenchmarkPickShard(b *testing.B) {
	s := benchSchedule(b)
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = s.PickShard("db", float64(i%60), r.Float64())
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("slow-shard:svc=db,at=10s,for=30s,shards=16,shard=3,x=4.5"); err != nil {
			b.Fatal(err)
		}
	}
}
