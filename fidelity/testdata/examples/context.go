// context.Context carries cancellation and deadlines to the work it is
// given.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

func slowSquare(ctx context.Context, n int, cost time.Duration) (int, error) {
	select {
	case <-time.After(cost):
		return n * n, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("square of %d: %w", n, ctx.Err())
	}
}

type key string

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	fmt.Println(slowSquare(ctx, 3, 5*time.Millisecond))
	_, err := slowSquare(ctx, 4, 5*time.Second)
	fmt.Println(err, errors.Is(err, context.DeadlineExceeded))

	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel2()
	}()
	_, err = slowSquare(ctx2, 5, 5*time.Second)
	fmt.Println(err)

	ctx3 := context.WithValue(context.Background(), key("user"), "ivy")
	fmt.Println(ctx3.Value(key("user")), ctx3.Value(key("other")))

	ctx4, cancel4 := context.WithCancelCause(context.Background())
	cancel4(errors.New("shutting down"))
	fmt.Println(ctx4.Err(), context.Cause(ctx4))
	_, has := ctx.Deadline()
	fmt.Println("has deadline:", has)
}
