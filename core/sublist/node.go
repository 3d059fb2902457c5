package sublist

import (
	"slices"
	"strings"

	"github.com/leafbox/leafbox/core/subject"
)

// node is one token position in the trie. The entries of a subject live on
// the node reached by following its tokens from the root. Every field is
// guarded by Sublist.mu.
type node[T comparable] struct {
	literal  map[string]*node[T] // children for literal tokens
	wildcard *node[T]            // child for the "*" token
	full     *node[T]            // child for the ">" token; always a leaf

	plain  set[T]        // plain entries
	queues []queueSet[T] // queue entries, one element per queue name
}

// queueSet holds the entries of one queue group at one node.
type queueSet[T comparable] struct {
	name    string
	members set[T]
}

// lookup returns the child for tok, or nil.
func (n *node[T]) lookup(tok string) *node[T] {
	switch tok {
	case subject.Wildcard:
		return n.wildcard
	case subject.FullWildcard:
		return n.full
	}
	return n.literal[tok]
}

// child returns the child for tok, creating it if needed.
func (n *node[T]) child(tok string) *node[T] {
	if c := n.lookup(tok); c != nil {
		return c
	}
	c := &node[T]{}
	switch tok {
	case subject.Wildcard:
		n.wildcard = c
	case subject.FullWildcard:
		n.full = c
	default:
		if n.literal == nil {
			n.literal = make(map[string]*node[T])
		}
		n.literal[strings.Clone(tok)] = c // the key must not pin the caller's subject
	}
	return c
}

// prune drops the child for tok.
func (n *node[T]) prune(tok string) {
	switch tok {
	case subject.Wildcard:
		n.wildcard = nil
	case subject.FullWildcard:
		n.full = nil
	default:
		delete(n.literal, tok)
		if len(n.literal) == 0 {
			n.literal = nil
		}
	}
}

func (n *node[T]) hasEntries() bool { return !n.plain.isEmpty() || len(n.queues) > 0 }

func (n *node[T]) isEmpty() bool {
	return !n.hasEntries() && len(n.literal) == 0 && n.wildcard == nil && n.full == nil
}

func (n *node[T]) queueIndex(name string) int {
	for i := range n.queues {
		if n.queues[i].name == name {
			return i
		}
	}
	return -1
}

// add records one insertion of v in queue ("" for plain). It returns the
// node's own copy of the queue name.
func (n *node[T]) add(queue string, v T) string {
	if queue == "" {
		n.plain.add(v)
		return ""
	}
	i := n.queueIndex(queue)
	if i < 0 {
		i = len(n.queues)
		n.queues = append(n.queues, queueSet[T]{name: strings.Clone(queue)})
	}
	n.queues[i].members.add(v)
	return n.queues[i].name
}

// remove undoes one insertion of v in queue and reports whether there was
// one. Empty queues are dropped so that isEmpty can prune the node.
func (n *node[T]) remove(queue string, v T) bool {
	if queue == "" {
		return n.plain.remove(v)
	}
	i := n.queueIndex(queue)
	if i < 0 || !n.queues[i].members.remove(v) {
		return false
	}
	if n.queues[i].members.isEmpty() {
		n.queues = slices.Delete(n.queues, i, i+1)
		if len(n.queues) == 0 {
			n.queues = nil
		}
	}
	return true
}

// match appends to out every node below n holding entries that match the
// remaining literal tokens toks. Each trie node is visited at most once.
func (n *node[T]) match(toks []string, out []*node[T]) []*node[T] {
	if len(toks) == 0 {
		if n.hasEntries() {
			out = append(out, n)
		}
		return out
	}
	if n.full != nil {
		out = append(out, n.full)
	}
	if n.wildcard != nil {
		out = n.wildcard.match(toks[1:], out)
	}
	if c := n.literal[toks[0]]; c != nil {
		out = c.match(toks[1:], out)
	}
	return out
}

// interest reports whether any entry below n matches toks.
func (n *node[T]) interest(toks []string) bool {
	if len(toks) == 0 {
		return n.hasEntries()
	}
	if n.full != nil {
		return true
	}
	if n.wildcard != nil && n.wildcard.interest(toks[1:]) {
		return true
	}
	c := n.literal[toks[0]]
	return c != nil && c.interest(toks[1:])
}

// appendEntries appends every entry at or below n to out, once per
// insertion. prefix is the subject of n; deeper calls write past its length
// but never inside it.
func (n *node[T]) appendEntries(out []Entry[T], prefix []byte) []Entry[T] {
	if n.hasEntries() {
		subj := string(prefix)
		for _, v := range n.plain.appendTo(nil) {
			out = append(out, Entry[T]{Subject: subj, Value: v})
		}
		for _, q := range n.queues {
			for _, v := range q.members.appendTo(nil) {
				out = append(out, Entry[T]{Subject: subj, Queue: q.name, Value: v})
			}
		}
	}
	for tok, c := range n.literal {
		out = c.appendEntries(out, appendToken(prefix, tok))
	}
	if n.wildcard != nil {
		out = n.wildcard.appendEntries(out, appendToken(prefix, subject.Wildcard))
	}
	if n.full != nil {
		out = n.full.appendEntries(out, appendToken(prefix, subject.FullWildcard))
	}
	return out
}

func appendToken(prefix []byte, tok string) []byte {
	if len(prefix) > 0 {
		prefix = append(prefix, subject.Sep)
	}
	return append(prefix, tok...)
}
