// Formatting and parsing times with layouts built from the reference time.
package main

import (
	"fmt"
	"time"
)

func main() {
	t := time.Date(2023, time.August, 5, 9, 4, 7, 250000000, time.FixedZone("CEST", 2*3600))
	fmt.Println(t.Format(time.RFC3339))
	fmt.Println(t.Format(time.RFC3339Nano))
	fmt.Println(t.Format(time.Kitchen))
	fmt.Println(t.Format("Mon Jan _2 15:04:05 2006"))
	fmt.Println(t.Format("2006-01-02T15:04:05.000-07:00"))
	fmt.Println(t.Format("02/01/06 3PM"))
	fmt.Printf("%d-%02d-%02dT%02d:%02d:%02d\n", t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second())

	p, err := time.Parse(time.RFC3339, "2012-11-01T22:08:41+00:00")
	fmt.Println(p, err)
	p, err = time.Parse("3 04 PM", "8 41 PM")
	fmt.Println(p, err)
	_, err = time.Parse(time.DateOnly, "2023-02-30")
	fmt.Println(err)
	d, err := time.ParseDuration("1h15m30.5s")
	fmt.Println(d, d.Seconds(), err)
}
