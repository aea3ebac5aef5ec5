//go:build !race

package notebook

const raceEnabled = false
