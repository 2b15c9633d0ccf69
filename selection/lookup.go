package selection

import v1beta1 "github.com/berthdev/berth/api/v1beta1"

// AcceleratorClass returns the cached class of that name. The runtime
// webhook uses it to tell a reference to a missing class from a typo.
func (x *Index) AcceleratorClass(name string) (*v1beta1.AcceleratorClass, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.classes[name]
	if !ok {
		return nil, false
	}
	return e.obj, true
}
