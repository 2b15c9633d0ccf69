package gpudiscovery

type nodeBuilder struct{ n Node }

// MakeNode builds a Node for tests.
func MakeNode(name string) *nodeBuilder {
	return &nodeBuilder{n: Node{Name: name, Labels: map[string]string{}}}
}

func (b *nodeBuilder) Label(k, v string) *nodeBuilder { b.n.Labels[k] = v; return b }
func (b *nodeBuilder) Resource(r string) *nodeBuilder {
	b.n.Resources = append(b.n.Resources, r)
	return b
}
func (b *nodeBuilder) Labels(m map[string]string) *nodeBuilder {
	for k, v := range m {
		b.n.Labels[k] = v
	}
	return b
}
func (b *nodeBuilder) Obj() Node { return b.n }
