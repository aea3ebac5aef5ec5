// math/rand/v2 with a seeded source, so the "random" numbers repeat from
// run to run; and the global source, checked only for ranges.
package main

import (
	"fmt"
	"math/rand/v2"
)

func main() {
	r := rand.New(rand.NewPCG(42, 1024))
	fmt.Println(r.IntN(100), r.IntN(100), r.IntN(100))
	fmt.Printf("%.4f\n", r.Float64())
	fmt.Println(r.Perm(6))
	deck := []string{"A", "K", "Q", "J", "10"}
	r.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
	fmt.Println(deck)

	same := rand.New(rand.NewPCG(42, 1024))
	fmt.Println("same seed, same first number:", same.IntN(100))

	n := rand.IntN(10)
	f := rand.Float64()
	fmt.Println("global source in range:", n >= 0 && n < 10, f >= 0 && f < 1)
	fmt.Println(rand.N[int64](1) == 0)
}
