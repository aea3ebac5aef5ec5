// Maps: make, literals, lookup with comma-ok, delete, clear and the maps
// package.
package main

import (
	"fmt"
	"maps"
	"slices"
)

func main() {
	stock := make(map[string]int)
	stock["apples"] = 12
	stock["pears"] = 3
	fmt.Println(stock, len(stock))

	fmt.Println("apples:", stock["apples"], "plums:", stock["plums"])
	if _, ok := stock["plums"]; !ok {
		fmt.Println("no plums at all")
	}

	delete(stock, "pears")
	fmt.Println(stock)

	prices := map[string]float64{"tea": 2.5, "coffee": 3, "juice": 4.25}
	keys := slices.Sorted(maps.Keys(prices))
	for _, k := range keys {
		fmt.Printf("%-6s %.2f\n", k, prices[k])
	}
	copied := maps.Clone(prices)
	fmt.Println(maps.Equal(copied, prices))
	clear(prices)
	fmt.Println(len(prices), len(copied))
}
