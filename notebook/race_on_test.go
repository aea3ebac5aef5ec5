//go:build race

package notebook

// raceEnabled is true under the race detector.
const raceEnabled = true
