package devenv

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindComponent(t *testing.T) {
	tests := []struct {
		name    string
		exe     string
		files   []string
		path    map[string]string
		want    string
		wantErr []string
	}{
		{"beside the executable first", "/opt/berth/bin/berth", []string{"/opt/berth/bin/berth-webhook"},
			map[string]string{"berth-webhook": "/usr/bin/berth-webhook"}, "/opt/berth/bin/berth-webhook", nil},
		{"then PATH", "/tmp/go-build1/exe/berth", nil,
			map[string]string{"berth-webhook": "/usr/bin/berth-webhook"}, "/usr/bin/berth-webhook", nil},
		{"missing: says where it looked and what to build", "/opt/berth/bin/berth", nil, nil, "",
			[]string{"berth-webhook not found at /opt/berth/bin/berth-webhook nor in $PATH", "make build", "go install github.com/berthdev/berth/cmd/berth-webhook"}},
		{"unknown executable: PATH only", "", nil, nil, "", []string{"berth-webhook not found in $PATH; build"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isExec := func(p string) bool {
				for _, f := range tc.files {
					if f == p {
						return true
					}
				}
				return false
			}
			lookPath := func(n string) (string, error) {
				if p, ok := tc.path[n]; ok {
					return p, nil
				}
				return "", errors.New("not found")
			}
			got, err := findComponent("berth-webhook", tc.exe, isExec, lookPath)
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, w := range tc.wantErr {
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
