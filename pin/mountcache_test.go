package pin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/pin"
)

// TestMountCacheMountsEachVersionOnce: the same version of a model gives
// the same mount, equal to Mount's; another version or a model without a
// resourceVersion is mounted afresh.
func TestMountCacheMountsEachVersionOnce(t *testing.T) {
	spec := v1beta1.BaseModelSpec{ModelFormat: v1beta1.ModelFormat{Name: "safetensors"}}
	m := &pin.Model{Kind: "ClusterBaseModel", Name: "m", Spec: spec, ResourceVersion: "3"}
	var c pin.MountCache
	first := c.Mount(m)
	assert.Equal(t, m.Mount(), first)
	assert.Same(t, first, c.Mount(m))
	in := pin.InputFor(&v1beta1.InferenceService{}, v1beta1.ComponentEngine, pin.Pin{}, pin.Objects{Model: m, Mounts: &c})
	assert.Same(t, first, in.Model, "InputFor mounts through the cache")
	next := *m
	next.ResourceVersion = "4"
	assert.NotSame(t, first, c.Mount(&next))
	unversioned := *m
	unversioned.ResourceVersion = ""
	assert.NotSame(t, c.Mount(&unversioned), c.Mount(&unversioned))
	assert.Nil(t, c.Mount(nil))
	var none *pin.MountCache
	assert.Equal(t, m.Mount(), none.Mount(m))
}
