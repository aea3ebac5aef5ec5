// Arbitrary precision with math/big, and bit tricks with math/bits.
package main

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
)

func main() {
	f := new(big.Int)
	f.MulRange(1, 30)
	fmt.Println("30! =", f)
	two := big.NewInt(2)
	fmt.Println("2^100 =", new(big.Int).Exp(two, big.NewInt(100), nil))
	r := big.NewRat(1, 3)
	r.Add(r, big.NewRat(1, 6))
	fmt.Println(r, r.FloatString(5))
	n, ok := new(big.Int).SetString("123456789012345678901234567890", 10)
	fmt.Println(n.BitLen(), ok, n.ProbablyPrime(10))

	fmt.Println(bits.OnesCount(255), bits.LeadingZeros64(1), bits.TrailingZeros(8), bits.Reverse8(1))
	hi, lo := bits.Mul64(math.MaxUint64, 2)
	fmt.Println(hi, lo)
	fmt.Println(math.MaxInt64, math.Inf(1), -math.MaxFloat64 < 0, math.IsNaN(math.NaN()))
}
