package nccl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/strata-ir/strata/runtime/cuda"
)

// The environment of a rank, as a launcher (examples/ddp -nproc) sets it.
const (
	// EnvRank is this process's rank, 0 … size-1 (default 0).
	EnvRank = "STRATA_RANK"
	// EnvWorldSize is the number of ranks (default 1).
	EnvWorldSize = "STRATA_WORLD_SIZE"
	// EnvAddr is host:port where rank 0 serves the unique id over TCP.
	EnvAddr = "STRATA_NCCL_ADDR"
	// EnvIDFile is a file, fresh for each job, where rank 0 writes the id.
	EnvIDFile = "STRATA_NCCL_ID_FILE"
)

// DefaultTimeout bounds the wait for rank 0's id.
const DefaultTimeout = 60 * time.Second

// Config is a rank's place in a job and how its ranks share the id.
type Config struct {
	Rank, Size int
	// Addr or IDFile is the bootstrap; with neither, a world of one rank
	// makes its id itself.
	Addr, IDFile string
	Timeout      time.Duration
}

// ConfigFromEnv reads STRATA_RANK, STRATA_WORLD_SIZE, STRATA_NCCL_ADDR and
// STRATA_NCCL_ID_FILE.
func ConfigFromEnv() (Config, error) {
	c := Config{Size: 1, Addr: os.Getenv(EnvAddr), IDFile: os.Getenv(EnvIDFile), Timeout: DefaultTimeout}
	num := func(name string, def int) (int, error) {
		v := os.Getenv(name)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("nccl: $%s = %q is not an integer", name, v)
		}
		return n, nil
	}
	var err error
	if c.Rank, err = num(EnvRank, 0); err != nil {
		return c, err
	}
	if c.Size, err = num(EnvWorldSize, 1); err != nil {
		return c, err
	}
	return c, c.check()
}

func (c Config) check() error {
	switch {
	case c.Size < 1:
		return fmt.Errorf("nccl: the world size ($%s) must be at least 1, got %d", EnvWorldSize, c.Size)
	case c.Rank < 0 || c.Rank >= c.Size:
		return fmt.Errorf("nccl: rank %d ($%s) is not in a world of %d ranks ($%s)", c.Rank, EnvRank, c.Size, EnvWorldSize)
	case c.Size > 1 && c.Addr == "" && c.IDFile == "":
		return fmt.Errorf("nccl: %d ranks need a bootstrap: set $%s (host:port of rank 0) or $%s (a file fresh for the job)", c.Size, EnvAddr, EnvIDFile)
	case c.Addr != "" && c.IDFile != "":
		return fmt.Errorf("nccl: set one of $%s and $%s, not both", EnvAddr, EnvIDFile)
	}
	return nil
}

// ShareID gives every rank rank 0's id: rank 0 calls make and publishes the
// result through c's bootstrap; the others wait for it (up to c.Timeout).
func ShareID(c Config, make func() (UniqueID, error)) (UniqueID, error) {
	if err := c.check(); err != nil {
		return UniqueID{}, err
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.Size == 1 && c.Addr == "" && c.IDFile == "":
		return make()
	case c.IDFile != "":
		return shareFile(c, make)
	}
	return shareTCP(c, make)
}

// magic starts the id's bytes on the wire and in the file, so that a rank
// reading something else says so.
var magic = []byte("strata-nccl-id-1\n")

func shareFile(c Config, make func() (UniqueID, error)) (UniqueID, error) {
	if c.Rank == 0 {
		id, err := make()
		if err != nil {
			return id, err
		}
		tmp, err := os.CreateTemp(filepath.Dir(c.IDFile), ".nccl-id-*")
		if err != nil {
			return id, fmt.Errorf("nccl: writing the id: %w", err)
		}
		_, werr := tmp.Write(append(append([]byte{}, magic...), id.Internal[:]...))
		cerr := tmp.Close()
		if err := errors.Join(werr, cerr); err != nil {
			os.Remove(tmp.Name())
			return id, fmt.Errorf("nccl: writing the id: %w", err)
		}
		if err := os.Rename(tmp.Name(), c.IDFile); err != nil {
			os.Remove(tmp.Name())
			return id, fmt.Errorf("nccl: writing the id: %w", err)
		}
		return id, nil
	}
	deadline := time.Now().Add(c.Timeout)
	for {
		b, err := os.ReadFile(c.IDFile)
		if err == nil {
			return parseID(b, c.IDFile)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return UniqueID{}, fmt.Errorf("nccl: reading the id: %w", err)
		}
		if time.Now().After(deadline) {
			return UniqueID{}, fmt.Errorf("nccl: rank %d waited %v for rank 0's id in %s", c.Rank, c.Timeout, c.IDFile)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func parseID(b []byte, from string) (UniqueID, error) {
	var id UniqueID
	if len(b) != len(magic)+UniqueIDBytes || !bytes.HasPrefix(b, magic) {
		return id, fmt.Errorf("nccl: %s does not hold a Strata NCCL id (%d bytes)", from, len(b))
	}
	copy(id.Internal[:], b[len(magic):])
	return id, nil
}

func shareTCP(c Config, make func() (UniqueID, error)) (UniqueID, error) {
	if c.Rank == 0 {
		ln, err := net.Listen("tcp", c.Addr)
		if err != nil {
			return UniqueID{}, fmt.Errorf("nccl: rank 0 serving the id: %w", err)
		}
		defer ln.Close()
		id, err := make()
		if err != nil {
			return id, err
		}
		msg := append(append([]byte{}, magic...), id.Internal[:]...)
		if tl, ok := ln.(*net.TCPListener); ok {
			tl.SetDeadline(time.Now().Add(c.Timeout))
		}
		for served := 1; served < c.Size; served++ {
			conn, err := ln.Accept()
			if err != nil {
				return id, fmt.Errorf("nccl: rank 0 served the id to %d of %d ranks: %w", served-1, c.Size-1, err)
			}
			conn.SetDeadline(time.Now().Add(c.Timeout))
			_, err = conn.Write(msg)
			conn.Close()
			if err != nil {
				return id, fmt.Errorf("nccl: rank 0 serving the id: %w", err)
			}
		}
		return id, nil
	}
	deadline := time.Now().Add(c.Timeout)
	for {
		conn, err := net.DialTimeout("tcp", c.Addr, time.Second)
		if err == nil {
			conn.SetDeadline(deadline)
			b, err := io.ReadAll(conn)
			conn.Close()
			if err != nil {
				return UniqueID{}, fmt.Errorf("nccl: rank %d reading the id from %s: %w", c.Rank, c.Addr, err)
			}
			return parseID(b, c.Addr)
		}
		if time.Now().After(deadline) {
			return UniqueID{}, fmt.Errorf("nccl: rank %d could not reach rank 0 at %s within %v: %w", c.Rank, c.Addr, c.Timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FromEnv joins the job the environment describes (ConfigFromEnv) on dev:
// the bootstrap, then InitRank.
func FromEnv(dev *cuda.Device) (*Comm, error) {
	c, err := ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	if err := Load(); err != nil {
		return nil, err
	}
	id, err := ShareID(c, NewUniqueID)
	if err != nil {
		return nil, err
	}
	return InitRank(dev, id, c.Size, c.Rank)
}
