package selection

import (
	"math/big"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// labelUnits are the byte units of well-known integer node labels, so that a
// quantity bound can be rewritten in the label's own unit.
var labelUnits = map[string]struct {
	bytes int64
	name  string
}{
	"nvidia.com/gpu.memory": {1 << 20, "MiB"}, // GPU feature discovery
}

var supportedOperators = []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}

// ValidateDiscovery checks the operators and values of a class's
// discovery.nodeSelectorTerms against what node affinity can express, since
// pods of the class get the same terms as required node affinity
// (merge.ClassPlacement). OEP-0003's base set writes "Lt 24Gi" and
// "Gte 32Gi": berth denies them, naming the exact field, the value and the
// rewrite (for nvidia.com/gpu.memory, in MiB: "Gt 32767"), rather than
// match nodes by a rule the pods could not state.
func ValidateDiscovery(spec *v1beta1.AcceleratorClassSpec) field.ErrorList {
	var errs field.ErrorList
	terms := field.NewPath("spec", "discovery", "nodeSelectorTerms")
	for i, t := range spec.Discovery.NodeSelectorTerms {
		for j := range t.MatchExpressions {
			errs = append(errs, validateExpression(terms.Index(i).Child("matchExpressions").Index(j), &t.MatchExpressions[j])...)
		}
	}
	return errs
}

func validateExpression(p *field.Path, e *corev1.NodeSelectorRequirement) field.ErrorList {
	op := string(e.Operator)
	switch e.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(e.Values) == 0 {
			return field.ErrorList{field.Required(p.Child("values"), op+" needs at least one value")}
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(e.Values) > 0 {
			return field.ErrorList{field.Forbidden(p.Child("values"), op+" takes no values")}
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(e.Values) != 1 {
			return field.ErrorList{field.Invalid(p.Child("values"), e.Values, op+" takes exactly one integer value")}
		}
		if _, err := strconv.ParseInt(e.Values[0], 10, 64); err != nil {
			return field.ErrorList{field.Invalid(p.Child("values").Index(0), e.Values[0],
				op+" compares integers, so "+strconv.Quote(e.Values[0])+" never matches a node; "+rewrite(e.Key, op, e.Values[0]))}
		}
	default:
		lower := strings.ToLower(op)
		if (strings.HasPrefix(lower, "g") || strings.HasPrefix(lower, "l")) && strings.HasSuffix(lower, "e") && len(e.Values) == 1 {
			return field.ErrorList{field.Invalid(p.Child("operator"), op,
				"node affinity has no "+op+", so pods could not be placed by it; "+rewrite(e.Key, op, e.Values[0]))}
		}
		return field.ErrorList{field.NotSupported(p.Child("operator"), op, supportedOperators)}
	}
	return nil
}

// rewrite says what to write instead of "key op value" with Gt or Lt and an
// integer: the bound in the label's unit when berth knows it (or when the
// value already is an integer), else how to choose one.
func rewrite(key, op, value string) string {
	n, unit, ok := boundIn(key, value)
	if !ok {
		return "write the bound as an integer in the label's own unit, or use In with the values your nodes carry"
	}
	// For an integer label: Gte n is Gt ⌈n⌉-1, Lte n is Lt ⌊n⌋+1, Gt n is
	// Gt ⌊n⌋ and Lt n is Lt ⌈n⌉.
	var newOp string
	var bound *big.Rat
	one := big.NewRat(1, 1)
	switch strings.ToLower(op) {
	case "gt":
		newOp, bound = "Gt", floorRat(n)
	case "lt":
		newOp, bound = "Lt", ceilRat(n)
	case "lte", "le":
		newOp, bound = "Lt", new(big.Rat).Add(floorRat(n), one)
	default: // gte, ge
		newOp, bound = "Gt", new(big.Rat).Sub(ceilRat(n), one)
	}
	prefix := ""
	if unit != "" {
		prefix = key + " counts " + unit + ": "
	}
	return prefix + "write operator " + newOp + " with value " + strconv.Quote(bound.FloatString(0))
}

// boundIn reads value as a number in the label's unit: a plain integer as
// it is, a quantity (24Gi) divided by the label's known byte unit.
func boundIn(key, value string) (*big.Rat, string, bool) {
	if i, err := strconv.ParseInt(value, 10, 64); err == nil {
		return big.NewRat(i, 1), "", true
	}
	u, known := labelUnits[key]
	q, err := resource.ParseQuantity(value)
	if !known || err != nil {
		return nil, "", false
	}
	return big.NewRat(q.Value(), u.bytes), u.name, true
}

func floorRat(r *big.Rat) *big.Rat {
	q := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for a positive denominator
	return new(big.Rat).SetInt(q)
}

func ceilRat(r *big.Rat) *big.Rat {
	f := floorRat(r)
	if f.Cmp(r) == 0 {
		return f
	}
	return f.Add(f, big.NewRat(1, 1))
}
