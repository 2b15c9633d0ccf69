package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/api/policy/v1alpha1"
)

// The rules, as Violation.Rule names them (the fields of
// v1alpha1.ServingPolicyRules).
const (
	RuleAcceleratorClasses          = "acceleratorClasses"
	RuleRuntimes                    = "runtimes"
	RuleImages                      = "images"
	RuleMaxAcceleratorsPerService   = "maxAcceleratorsPerService"
	RuleMaxAcceleratorsPerNamespace = "maxAcceleratorsPerNamespace"
	RuleMaxCostPerHour              = "maxCostPerHour"
	RuleRequiredLabels              = "requiredLabels"
	RuleAllowCommand                = "allowCommand"
)

// Violation is one broken rule of one policy.
type Violation struct {
	Policy  string                      // the ServingPolicy's name
	Actions []v1alpha1.ValidationAction // the policy's actions
	Rule    string                      // a Rule* constant
	Field   *field.Path                 // the field of the checked object it is about, when known
	Message string                      // the whole sentence, starting "ServingPolicy/<name>: "
}

func (c *compiled) violation(rule string, f *field.Path, text string) Violation {
	return Violation{Policy: c.name, Actions: c.actions, Rule: rule, Field: f, Message: c.ref + ": " + text}
}

// sortViolations orders by policy, then rule, then message, and drops
// repeats (the same image in a leader's and a worker's pod).
func sortViolations(vs []Violation) []Violation {
	if len(vs) == 0 {
		return nil
	}
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := &vs[i], &vs[j]
		if a.Policy != b.Policy {
			return a.Policy < b.Policy
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Message < b.Message
	})
	out := vs[:0]
	for i, v := range vs {
		if i > 0 && v.Policy == vs[i-1].Policy && v.Message == vs[i-1].Message {
			continue
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Outcome splits violations by action: Deny messages, Warn messages,
// Audit annotations (key: AuditKey of the policy's name, value: the
// messages joined by "; ") and the audited violations (for a metric).
type Outcome struct {
	Deny, Warn []string
	Audit      map[string]string
	Audited    []Violation
}

// Enforce splits violations by their policies' actions. A violation of a
// policy with Deny and Audit is in both.
func Enforce(vs []Violation) Outcome {
	var o Outcome
	for _, v := range vs {
		for _, a := range v.Actions {
			switch a {
			case v1alpha1.Deny:
				o.Deny = append(o.Deny, v.Message)
			case v1alpha1.Warn:
				o.Warn = append(o.Warn, v.Message)
			case v1alpha1.Audit:
				if o.Audit == nil {
					o.Audit = map[string]string{}
				}
				key := AuditKey(v.Policy)
				if prev, ok := o.Audit[key]; ok {
					o.Audit[key] = prev + "; " + v.Message
				} else {
					o.Audit[key] = v.Message
				}
				o.Audited = append(o.Audited, v)
			}
		}
	}
	return o
}

// Denied joins the Deny messages into one admission message, one per line
// after the first.
func (o Outcome) Denied() string { return strings.Join(o.Deny, "\n") }

// AuditKey is the audit annotation key of a policy's violations. The
// apiserver prefixes a webhook's keys with the webhook's name and drops a
// key for which "<webhook name>/<key>" is not a qualified name, so the key
// is a qualified name's name part: at most 63 characters of letters,
// digits, '-', '_' and '.', starting and ending with a letter or digit.
// A ServingPolicy's name (a DNS subdomain: lower-case letters, digits, '-'
// and '.', up to 253 characters) is its own key when it has at most 63
// characters. A longer name is keyed by its first 52 characters (any
// other character made '-', trailing '-', '_' and '.' dropped), "-" and
// the first 10 hex digits of the name's SHA-256: stable, and different for
// names that share their first 52 characters.
func AuditKey(policy string) string {
	if len(validation.IsQualifiedName(policy)) == 0 && !strings.Contains(policy, "/") {
		return policy
	}
	sum := sha256.Sum256([]byte(policy))
	hash := hex.EncodeToString(sum[:5])
	prefix := []byte(policy[:min(len(policy), auditKeyPrefix)])
	for i, b := range prefix {
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.') {
			prefix[i] = '-'
		}
	}
	kept := strings.Trim(string(prefix), "-_.")
	if kept == "" {
		return "servingpolicy-" + hash
	}
	return kept + "-" + hash
}

// auditKeyPrefix is how much of a long policy name AuditKey keeps: with
// "-" and 10 hex digits, a key of 63 characters at most.
const auditKeyPrefix = maxAuditKey - 11

// maxAuditKey is a qualified name's name part's longest (apimachinery's
// validation keeps its constant unexported).
const maxAuditKey = 63
