package servinggroups

import (
	"sync"
	"time"
)

// expectations remember, per InferenceService, the pod creations and
// deletions the controller has asked for and the informer has not shown
// yet (the ReplicaSet controller's pattern). While any are pending, the
// service is not planned again: a stale cache must never make the planner
// create a group twice or roll one more group than maxUnavailable allows.
// Pending entries expire after ttl so a lost watch event cannot wedge a
// service forever.
type expectations struct {
	mu  sync.Mutex
	ttl time.Duration
	now func() time.Time
	m   map[string]*pending // by service key
}

type pending struct {
	creates map[string]time.Time // pod name
	deletes map[string]time.Time // pod UID
}

func newExpectations(ttl time.Duration, now func() time.Time) *expectations {
	return &expectations{ttl: ttl, now: now, m: map[string]*pending{}}
}

func (e *expectations) entry(key string) *pending {
	p := e.m[key]
	if p == nil {
		p = &pending{creates: map[string]time.Time{}, deletes: map[string]time.Time{}}
		e.m[key] = p
	}
	return p
}

// ExpectCreate records a pod creation about to be sent.
func (e *expectations) ExpectCreate(key, podName string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(key).creates[podName] = e.now()
}

// ExpectDelete records a pod deletion about to be sent.
func (e *expectations) ExpectDelete(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(key).deletes[uid] = e.now()
}

// Created is called when the informer shows a pod (or the create failed
// and will not be shown).
func (e *expectations) Created(key, podName string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.m[key]; p != nil {
		delete(p.creates, podName)
	}
}

// Deleted is called when the informer shows a pod going away or marked
// for deletion (or the delete failed and will not be shown).
func (e *expectations) Deleted(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.m[key]; p != nil {
		delete(p.deletes, uid)
	}
}

// Satisfied reports whether nothing is pending for key; expired entries
// are dropped.
func (e *expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.m[key]
	if p == nil {
		return true
	}
	now := e.now()
	for _, m := range []map[string]time.Time{p.creates, p.deletes} {
		for k, t := range m {
			if now.Sub(t) > e.ttl {
				delete(m, k)
			}
		}
	}
	if len(p.creates) == 0 && len(p.deletes) == 0 {
		delete(e.m, key)
		return true
	}
	return false
}

// Forget drops everything pending for key (the service is gone).
func (e *expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
