package gxrt

import (
	"sync"
	"testing"
)

// Blocking operations of cell code against Go's own: a ping-pong over
// unbuffered channels (every operation blocks), a buffered channel (none
// does), an uncontended mutex.

func BenchmarkPingPong(b *testing.B) {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	b.Run("go", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ping <- i
			<-pong
		}
	})
	b.Run("gxrt", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			SendTo(ping).Send(i)
			Recv(pong)
		}
	})
	close(ping)
}

func BenchmarkBuffered(b *testing.B) {
	ch := make(chan int, 1)
	b.Run("go", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ch <- i
			<-ch
		}
	})
	b.Run("gxrt", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			SendTo(ch).Send(i)
			Recv(ch)
		}
	})
}

func BenchmarkMutex(b *testing.B) {
	var mu sync.Mutex
	b.Run("go", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			mu.Lock()
			mu.Unlock()
		}
	})
	b.Run("gxrt", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Lock(&mu)
			mu.Unlock()
		}
	})
}
