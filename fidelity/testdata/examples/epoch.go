// Unix time: seconds, milliseconds and nanoseconds since the epoch, and
// back.
package main

import (
	"fmt"
	"time"
)

func main() {
	t := time.Date(2009, time.November, 10, 23, 0, 0, 123456789, time.UTC)
	fmt.Println(t.Unix(), t.UnixMilli(), t.UnixMicro(), t.UnixNano())
	fmt.Println(time.Unix(t.Unix(), 0).UTC())
	fmt.Println(time.UnixMilli(t.UnixMilli()).UTC())
	fmt.Println(time.Unix(0, t.UnixNano()).UTC().Equal(t))
	fmt.Println(time.Unix(0, 0).UTC())
	fmt.Println("the clock is past 2020:", time.Now().Unix() > 1577836800)
}
