// A pool of workers taking jobs from one channel and sending results on
// another.
package main

import (
	"fmt"
	"slices"
	"time"
)

type result struct {
	job, worker, value int
}

func worker(id int, jobs <-chan int, results chan<- result) {
	for j := range jobs {
		time.Sleep(5 * time.Millisecond)
		results <- result{job: j, worker: id, value: j * j}
	}
}

func main() {
	const numJobs = 9
	jobs := make(chan int, numJobs)
	results := make(chan result, numJobs)
	for w := 1; w <= 3; w++ {
		go worker(w, jobs, results)
	}
	start := time.Now()
	for j := 1; j <= numJobs; j++ {
		jobs <- j
	}
	close(jobs)

	values := make([]int, 0, numJobs)
	workers := map[int]bool{}
	for range numJobs {
		r := <-results
		values = append(values, r.value)
		workers[r.worker] = true
	}
	slices.Sort(values)
	fmt.Println(values)
	fmt.Println("workers used:", len(workers) > 1)
	fmt.Println("faster than one worker:", time.Since(start) < numJobs*5*time.Millisecond*3)
}
