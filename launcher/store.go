package launcher

import (
	"context"
	"sync"

	"github.com/goaccel/goaccel/accelerate/pg"
)

// rendezvousStore is the store the launcher hosts for a static rendezvous.
type rendezvousStore interface {
	// Addr is host:port, with the real port when port "0" was asked for.
	Addr() string
	// Close stops serving and returns when the server has stopped.
	Close() error
}

// hostStore listens at addr and serves the rendezvous store, admitting only
// processes that know secret. A taken port yields an error matching
// pg.ErrPortInUse whose text names the port and suggests UsePort "0".
var hostStore = func(addr, secret string) (rendezvousStore, error) {
	st, err := pg.NewStore(addr, secret, pg.WithStoreLogger(log))
	if err != nil {
		return nil, err
	}
	h := &pgStore{st: st, done: make(chan struct{})}
	go func() { // owner: the launch; ends when Close closes the store
		defer close(h.done)
		if err := st.Serve(context.Background()); err != nil {
			log.WithError(err).Warn("launcher: rendezvous store stopped")
		}
	}()
	return h, nil
}

type pgStore struct {
	st   *pg.Store
	done chan struct{}
	once sync.Once
	err  error
}

func (p *pgStore) Addr() string { return p.st.Addr() }

func (p *pgStore) Close() error {
	p.once.Do(func() {
		p.err = p.st.Close()
		<-p.done
	})
	return p.err
}
