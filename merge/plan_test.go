package merge

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanComposesAsComposePod: for every golden case, a plan built once
// and applied three times gives what ComposePod gives each time, and the
// plan afterwards equals a freshly built one (applying never changed it,
// which sharing it between admissions needs).
func TestPlanComposesAsComposePod(t *testing.T) {
	for _, dir := range successCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			in, pod := loadCase(t, dir)
			want := pod.DeepCopy()
			require.NoError(t, ComposePod(in, want))
			pl, err := NewPlan(in)
			require.NoError(t, err)
			for i := 0; i < 3; i++ {
				got := pod.DeepCopy()
				require.NoError(t, pl.Compose(got, in.Group))
				assert.Equal(t, mustYAML(t, want), mustYAML(t, got), "compose %d", i)
				// Change everything the pod holds in place, as later code
				// may: whatever it shares with the plan changes the plan.
				scribble(reflect.ValueOf(got).Elem())
			}
			fresh, err := NewPlan(in)
			require.NoError(t, err)
			assert.True(t, reflect.DeepEqual(fresh.p, pl.p), "applying the plan changed it")
		})
	}
}

func TestPlanRejectsAnotherRole(t *testing.T) {
	dirs := successCases(t)
	in, pod := loadCase(t, dirs[0])
	pl, err := NewPlan(in)
	require.NoError(t, err)
	g := in.Group
	g.Role = RoleWorker
	if in.Group.Role == RoleWorker {
		g.Role = RoleLeader
	}
	assert.ErrorContains(t, pl.Compose(pod, g), "cannot compose a pod of role")
	assert.Equal(t, errNoPod, pl.Compose(nil, in.Group))
}

// scribble overwrites every string and number reachable from v through
// pointers, slices, maps and struct fields.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			scribble(v.Index(i))
		}
	case reflect.Map:
		if v.Type().Elem().Kind() == reflect.String {
			for _, k := range v.MapKeys() {
				v.SetMapIndex(k, reflect.ValueOf("scribbled").Convert(v.Type().Elem()))
			}
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString("scribbled")
		}
	case reflect.Int32, reflect.Int64:
		if v.CanSet() {
			v.SetInt(-7)
		}
	}
}
