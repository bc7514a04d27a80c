package replay

import (
	"runtime"
	"sync"
)

// parallel runs do(0) … do(n-1) on every core and returns the first error
// in index order, so the outcome does not depend on scheduling (runs of one
// matrix tend to fail alike: one error says it once).
func parallel(n int, do func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = do(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
