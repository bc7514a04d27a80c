package replay

import (
	"errors"
	"runtime"
	"sync"
)

// parallel runs do(0) … do(n-1) on every core and returns their errors
// joined, in index order, so the outcome does not depend on scheduling.
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
	return errors.Join(errs...)
}
