package mqttstate

import "strings"

// topicTrie indexes retained topics by level, so that Retained visits the
// branches a filter can match instead of every topic.
type topicTrie struct {
	root trieNode
}

// trieNode is one level; topic is set when a topic ends here.
type trieNode struct {
	children map[string]*trieNode
	topic    string
	end      bool
}

// insert adds a topic.
func (t *topicTrie) insert(topic string) {
	n := &t.root
	for level := range strings.SplitSeq(topic, "/") {
		c := n.children[level]
		if c == nil {
			if n.children == nil {
				n.children = map[string]*trieNode{}
			}
			c = &trieNode{}
			n.children[level] = c
		}
		n = c
	}
	n.topic, n.end = topic, true
}

// remove deletes a topic and prunes the levels left empty.
func (t *topicTrie) remove(topic string) {
	var path []*trieNode
	var levels []string
	n := &t.root
	for level := range strings.SplitSeq(topic, "/") {
		c := n.children[level]
		if c == nil {
			return
		}
		path, levels = append(path, n), append(levels, level)
		n = c
	}
	n.end, n.topic = false, ""
	for i := len(path) - 1; i >= 0 && !n.end && len(n.children) == 0; i-- {
		delete(path[i].children, levels[i])
		n = path[i]
	}
}

// match calls fn for each topic the valid filter matches (Match's rules).
func (t *topicTrie) match(filter string, fn func(topic string)) {
	levels := strings.Split(filter, "/")
	t.root.match(levels, true, fn)
}

func (n *trieNode) match(levels []string, first bool, fn func(string)) {
	if len(levels) == 0 {
		if n.end {
			fn(n.topic)
		}
		return
	}
	switch l := levels[0]; l {
	case "#":
		// The parent level itself, then everything below.
		if !first && n.end {
			fn(n.topic)
		}
		n.all(first, fn)
	case "+":
		for name, c := range n.children {
			if first && strings.HasPrefix(name, "$") {
				continue
			}
			c.match(levels[1:], false, fn)
		}
	default:
		if c := n.children[l]; c != nil {
			c.match(levels[1:], false, fn)
		}
	}
}

// all calls fn for every topic below n; at the root, $ topics are left out.
func (n *trieNode) all(root bool, fn func(string)) {
	for name, c := range n.children {
		if root && strings.HasPrefix(name, "$") {
			continue
		}
		if c.end {
			fn(c.topic)
		}
		c.all(false, fn)
	}
}
