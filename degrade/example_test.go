package degrade_test

import (
	"fmt"

	"github.com/retryaudit/retryaudit/degrade"
)

func ExampleParse() {
	f, err := degrade.Parse("outage:svc=db,at=10s,for=3s")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Kind, f.Service, f.At, f.For, f.Mode)
	fmt.Println(f.String())
	fmt.Println(f.Active(9), f.Active(10), f.Active(13))

	_, err = degrade.Parse("outage:svc=db,at=10s")
	fmt.Println(err)
	// Output:
	// outage db 10 3 error
	// outage:svc=db,at=10s,for=3s,mode=error
	// false true false
	// degrade "outage:svc=db,at=10s": missing for=; want outage:svc=NAME,at=DURATION,for=DURATION[,mode=error|timeout|error-after-work]
}

func ExampleSchedule_Effect() {
	s, err := degrade.ParseAll([]string{
		"slow-shard:svc=db,at=10s,for=30s,shard=3,x=10",
		"packet-loss:edge=api->db,at=20s,for=10s,p=0.2",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", s.Effect("api", "db", 3, 25))
	fmt.Printf("%+v\n", s.Effect("worker", "db", 1, 25))
	fmt.Println(s.Shards("db"), s.Services())
	start, end, _ := s.Trigger()
	fmt.Println(start, end)
	// Output:
	// {Fail:false NoAnswer:false FailAfterWork:false ErrorRate:0 ErrorAfterWork:0 Loss:0.2 Slow:10 Add:0 Limit:0}
	// {Fail:false NoAnswer:false FailAfterWork:false ErrorRate:0 ErrorAfterWork:0 Loss:0 Slow:1 Add:0 Limit:0}
	// 8 [api db]
	// 10 40
}
