package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "500M", want: 500_000_000},
		{in: "7B", want: 7_000_000_000},
		{in: "7.6B", want: 7_600_000_000},
		{in: "1.5T", want: 1_500_000_000_000},
		{in: "500K", want: 500_000},     // a peer read K as 0
		{in: "9b", want: 9_000_000_000}, // a peer read lower case as 0
		{in: "500m", want: 500_000_000},
		{in: "1.5t", want: 1_500_000_000_000},
		{in: " 70B ", want: 70_000_000_000}, // a peer read trailing space as 0
		{in: "70 B", want: 70_000_000_000},
		{in: "0.5B", want: 500_000_000},
		{in: "12", want: 12},
		{in: "7.000000001B", want: 7_000_000_001},
		{in: "9223372036854775807", want: 9223372036854775807},
		{in: "", wantErr: true},
		{in: "B", wantErr: true},
		{in: "7.B", wantErr: true},
		{in: ".5B", wantErr: true},
		{in: "-1B", wantErr: true},
		{in: "1e9", wantErr: true},
		{in: "7GB", wantErr: true},
		{in: "7X", wantErr: true},
		{in: "1.5", wantErr: true},           // a fraction of one parameter
		{in: "7.0000000001B", wantErr: true}, // below one parameter
		{in: "9999999999T", wantErr: true},   // overflows int64
		{in: "99999999999999999999", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.in)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{7_000_000_000, "7B"},
		{7_600_000_000, "7.6B"},
		{500_000_000, "500M"},
		{1_500_000_000_000, "1.5T"},
		{500_000, "500K"},
		{999, "999"},
		{0, "0"},
		{7_000_000_001, "7.000000001B"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, FormatSize(tt.in))
			back, err := ParseSize(tt.want)
			require.NoError(t, err)
			assert.Equal(t, tt.in, back)
		})
	}
}

func TestSizeRange(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	tests := []struct {
		name     string
		a, b     sizeRange
		overlaps bool
	}{
		{"identical", sizeRange{n(5), n(9)}, sizeRange{n(5), n(9)}, true},
		{"partly overlapping", sizeRange{n(5), n(9)}, sizeRange{n(8), n(20)}, true},
		{"touching bounds", sizeRange{n(5), n(9)}, sizeRange{n(9), n(20)}, true},
		{"disjoint", sizeRange{n(5), n(9)}, sizeRange{n(10), n(20)}, false},
		{"min only vs max only", sizeRange{min: n(10)}, sizeRange{max: n(9)}, false},
		{"min only vs max only overlapping", sizeRange{min: n(5)}, sizeRange{max: n(9)}, true},
		{"no range", sizeRange{}, sizeRange{n(1), n(2)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.overlaps, tt.a.overlaps(tt.b))
			assert.Equal(t, tt.overlaps, tt.b.overlaps(tt.a))
		})
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    Version
		wantErr bool
	}{
		{in: "1", want: Version{Parts: [3]int64{1}, Precision: 1}},
		{in: "1.3", want: Version{Parts: [3]int64{1, 3}, Precision: 2}},
		{in: "4.36.2", want: Version{Parts: [3]int64{4, 36, 2}, Precision: 3}},
		{in: "v1.0.0", want: Version{Parts: [3]int64{1, 0, 0}, Precision: 3}},
		{in: "V2", want: Version{Parts: [3]int64{2}, Precision: 1}},
		{in: "", wantErr: true},
		{in: "v", wantErr: true},
		{in: "1.", wantErr: true},
		{in: "1..2", wantErr: true},
		{in: "1.2.3.4", wantErr: true},
		// PEP 440 pre, post and dev releases (transformers ships 4.45.0.dev0)
		// and local versions (torch 2.1.0+cu121), in normalized form.
		{in: "4.45.0.dev0", want: Version{Parts: [3]int64{4, 45, 0}, Precision: 3, HasDev: true}},
		{in: "1.0.0-rc1", want: Version{Parts: [3]int64{1, 0, 0}, Precision: 3, Pre: "rc", PreN: 1}},
		{in: "1.0a1", want: Version{Parts: [3]int64{1, 0}, Precision: 2, Pre: "a", PreN: 1}},
		{in: "1.0.0.beta2", want: Version{Parts: [3]int64{1, 0, 0}, Precision: 3, Pre: "b", PreN: 2}},
		{in: "1.0c", want: Version{Parts: [3]int64{1, 0}, Precision: 2, Pre: "rc"}},
		{in: "2.0.post1", want: Version{Parts: [3]int64{2, 0}, Precision: 2, HasPost: true, Post: 1}},
		{in: "2.0-3", want: Version{Parts: [3]int64{2, 0}, Precision: 2, HasPost: true, Post: 3}},
		{in: "2.0rc1.post2.dev3", want: Version{Parts: [3]int64{2, 0}, Precision: 2, Pre: "rc", PreN: 1, HasPost: true, Post: 2, HasDev: true, Dev: 3}},
		{in: "2.1.0+cu121", want: Version{Parts: [3]int64{2, 1, 0}, Precision: 3, Local: "cu121"}},
		{in: "1.0.0-rc", want: Version{Parts: [3]int64{1, 0, 0}, Precision: 3, Pre: "rc"}},
		{in: "1.0.0rc1.extra", wantErr: true},
		{in: "1.0+", wantErr: true},
		{in: "latest", wantErr: true},
		{in: "99999999999999999999", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseVersion(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestVersionRuleMatches(t *testing.T) {
	tests := []struct {
		name    string
		runtime string
		op      v1beta1.RuleOperator
		model   string
		want    bool
	}{
		{"runtime 1 Equal model 1.3 (KServe needs the exact string)", "1", "", "1.3", true},
		{"runtime 1 GreaterThanOrEqual model 1.0.0 (OME needs equal precision)", "1", v1beta1.RuleOperatorGreaterThanOrEqual, "1.0.0", true},
		{"runtime 1.0.0 Equal model 1", "1.0.0", v1beta1.RuleOperatorEqual, "1", true},
		{"runtime 4.36 matches 4.36.2", "4.36", "", "4.36.2", true},
		{"runtime 4.36 does not match 4.37.0", "4.36", "", "4.37.0", false},
		{"runtime 1.2 Equal model 1", "1.2", "", "1", false},
		{"runtime v1.0.0 Equal model 1.0.0", "v1.0.0", "", "1.0.0", true},
		{"GreaterThanOrEqual accepts older models", "4.38.2", v1beta1.RuleOperatorGreaterThanOrEqual, "4.36.2", true},
		{"GreaterThanOrEqual rejects newer models", "4.38.2", v1beta1.RuleOperatorGreaterThanOrEqual, "4.40.0", false},
		{"GreaterThan rejects equal", "4.38", v1beta1.RuleOperatorGreaterThan, "4.38.9", false},
		{"GreaterThan accepts older", "4.38", v1beta1.RuleOperatorGreaterThan, "4.37.9", true},
		{"10 is greater than 9 numerically", "10", v1beta1.RuleOperatorGreaterThan, "9.9", true},
		// PEP 440: a runtime written in full (three parts, or with a suffix)
		// means that release; a shorter one is a prefix and takes any suffix.
		{"4.45 takes the 4.45.0 dev build", "4.45", "", "4.45.0.dev0", true},
		{"4.45.0 is not its dev build", "4.45.0", "", "4.45.0.dev0", false},
		{"a dev build is older than its release", "4.45.0", v1beta1.RuleOperatorGreaterThan, "4.45.0.dev0", true},
		{"and newer than the previous release", "4.44.2", v1beta1.RuleOperatorGreaterThanOrEqual, "4.45.0.dev0", false},
		{"the same dev build", "4.45.0.dev0", "", "4.45.0.dev0", true},
		{"dev0 before dev1", "4.45.0.dev1", v1beta1.RuleOperatorGreaterThan, "4.45.0.dev0", true},
		{"dev before alpha", "1.0a1", v1beta1.RuleOperatorGreaterThan, "1.0.dev5", true},
		{"alpha before beta before rc", "1.0rc1", v1beta1.RuleOperatorGreaterThan, "1.0b9", true},
		{"rc before the release", "1.0.0", v1beta1.RuleOperatorGreaterThan, "1.0.0rc1", true},
		{"post after the release", "1.0.0", v1beta1.RuleOperatorGreaterThanOrEqual, "1.0.0.post1", false},
		{"a pre-release's dev build is before it", "1.0rc1", v1beta1.RuleOperatorGreaterThan, "1.0rc1.dev2", true},
		{"the local label is ignored", "2.1.0", "", "2.1.0+cu121", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := tt.op
			r, err := parseRule(tt.runtime, &op)
			require.NoError(t, err)
			m, err := ParseVersion(tt.model)
			require.NoError(t, err)
			assert.Equal(t, tt.want, r.matches(&m))
		})
	}
}

func TestVersionRuleCompatible(t *testing.T) {
	tests := []struct {
		name     string
		a, b     string
		aOp, bOp v1beta1.RuleOperator
		want     bool
	}{
		{"same version", "1.0.0", "1.0.0", "", "", true},
		{"different precision, same prefix", "1", "1.0.0", "", "", true},
		{"different majors", "1", "2", "", "", false},
		{"1.3 vs 1.4", "1.3", "1.4.0", "", "", false},
		{"Equal 2 vs GreaterThanOrEqual 3", "2", "3", "", v1beta1.RuleOperatorGreaterThanOrEqual, true},
		{"Equal 4 vs GreaterThanOrEqual 3", "4", "3", "", v1beta1.RuleOperatorGreaterThanOrEqual, false},
		{"Equal 3 vs GreaterThan 3", "3", "3", "", v1beta1.RuleOperatorGreaterThan, false},
		{"two upper bounds", "1", "7", v1beta1.RuleOperatorGreaterThan, v1beta1.RuleOperatorGreaterThanOrEqual, true},
		{"GreaterThan 0 accepts nothing", "0", "7", v1beta1.RuleOperatorGreaterThan, v1beta1.RuleOperatorGreaterThanOrEqual, false},
		{"a release and its dev build", "4.45.0", "4.45.0.dev0", "", "", false},
		{"a prefix and a dev build under it", "4.45", "4.45.0.dev0", "", "", true},
		{"Equal dev build vs GreaterThanOrEqual release", "4.45.0.dev0", "4.45.0", "", v1beta1.RuleOperatorGreaterThanOrEqual, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := parseRule(tt.a, &tt.aOp)
			require.NoError(t, err)
			b, err := parseRule(tt.b, &tt.bOp)
			require.NoError(t, err)
			assert.Equal(t, tt.want, a.compatible(b))
			assert.Equal(t, tt.want, b.compatible(a), "compatibility is symmetric")
		})
	}
}

func TestParseDecimal(t *testing.T) {
	ten, err := parseDecimal("10.0")
	require.NoError(t, err)
	nine, err := parseDecimal("9.0")
	require.NoError(t, err)
	assert.Greater(t, ten, nine, "10.0 > 9.0 numerically (a peer compared strings)")
	v, err := parseDecimal("8.9")
	require.NoError(t, err)
	assert.Equal(t, "8.9", formatDecimal(v))
	for _, bad := range []string{"", "x", "8.", ".5", "-1", "1.2.3"} {
		_, err := parseDecimal(bad)
		assert.Error(t, err, bad)
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"500M", "7B", "7.6B", "1.5T", "500K", "9b", " 70B ", "12", "", "1e9", "-1", "9999999999T", "7.0000000001B", "0.000000001T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, n, int64(0))
		back, err := ParseSize(FormatSize(n))
		require.NoError(t, err, "FormatSize(%d) = %q must parse", n, FormatSize(n))
		require.Equal(t, n, back)
	})
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1", "1.3", "4.36.2", "v1.0.0", "", "1.", "1.2.3.4", "1.0.0-rc1", "99999999999999999999", "V0", "4.45.0.dev0", "2.0rc1.post2.dev3", "2.1.0+cu121"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		require.True(t, v.Precision >= 1 && v.Precision <= 3)
		back, err := ParseVersion(v.String())
		require.NoError(t, err)
		require.Equal(t, v, back)
		r := versionRule{v: v, op: v1beta1.RuleOperatorEqual}
		require.True(t, r.matches(&v), "a version matches itself")
		require.True(t, r.compatible(r))
	})
}
