package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// stateLock is an exclusive flock on DIR/lock holding the owner's pid. The
// kernel drops the lock when the owner dies, so a lock file left by a dead
// process is simply taken over.
type stateLock struct{ f *os.File }

func lockStateDir(dir string) (*stateLock, error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		data, _ := os.ReadFile(path)
		f.Close()
		owner := strings.TrimSpace(string(data))
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if _, perr := strconv.Atoi(owner); perr == nil {
				return nil, fmt.Errorf("state dir %s is in use by a running sandbox (pid %s); stop it or use another --state-dir", dir, owner)
			}
			return nil, fmt.Errorf("state dir %s is in use by a running sandbox; stop it or use another --state-dir", dir)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, err
	}
	return &stateLock{f: f}, nil
}

func (l *stateLock) release() {
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
}
