// time.Time and time.Duration: building, comparing and doing arithmetic
// on fixed instants.
package main

import (
	"fmt"
	"time"
)

func main() {
	launch := time.Date(2021, time.March, 14, 15, 9, 26, 535897932, time.UTC)
	fmt.Println(launch)
	fmt.Println(launch.Year(), launch.Month(), launch.Day(), launch.Weekday(), launch.YearDay())
	fmt.Println(launch.Hour(), launch.Minute(), launch.Second(), launch.Nanosecond(), launch.Location())

	landing := launch.Add(200*24*time.Hour + 90*time.Minute)
	fmt.Println(landing)
	fmt.Println(launch.Before(landing), launch.After(landing), launch.Equal(launch.UTC()))

	d := landing.Sub(launch)
	fmt.Println(d, d.Hours(), d.Minutes())
	fmt.Println(launch.AddDate(0, 1, -14).Format(time.DateOnly))
	fmt.Println(launch.Truncate(time.Hour), launch.Round(time.Minute))
	fmt.Println(time.Duration(1500)*time.Millisecond, 90*time.Second, time.Duration(0))

	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	fmt.Println(launch.In(zone))
	fmt.Println("now is after launch:", time.Now().After(launch))
}
