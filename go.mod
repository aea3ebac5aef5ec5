module github.com/goaccel/goaccel

go 1.26

// SetSeed seeds math/rand's global source (cells' rand.Intn, ...), which
// Go 1.24+ ignores unless this setting is on.
godebug randseednop=0

require (
	github.com/NVIDIA/go-nvml v0.13.0-1
	github.com/go-zeromq/zmq4 v0.17.0
	github.com/google/uuid v1.6.0
	github.com/sirupsen/logrus v1.10.1
	github.com/traefik/yaegi v0.16.1
	golang.org/x/sys v0.13.0
	gonum.org/v1/gonum v0.16.0
	google.golang.org/protobuf v1.36.10
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/go-zeromq/goczmq/v4 v4.2.2 // indirect
	golang.org/x/sync v0.12.0 // indirect
	golang.org/x/text v0.23.0 // indirect
)
