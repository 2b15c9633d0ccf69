package merge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/berthdev/berth/api/v1beta1"
)

var errNoPod = errors.New("merge: no pod given")

// Revision is a stable hash of exactly the inputs that determine the pods of
// in.Component: the layers of every role (single, leader, worker) after
// templates are rendered, so a label that a template uses counts and one
// that none uses does not; the class's node selection and GPU resource;
// prefill/decode wiring; profile references, and the spec of referenced
// profiles whose updateStrategy is RollingUpdate. Maps are hashed with
// sorted keys (encoding/json), and nothing from group identity or object
// metadata such as resourceVersion enters. If the inputs cannot be composed,
// the error text is hashed, so the revision still changes when they do.
func Revision(in Input) string {
	type rev struct {
		Plans []*plan `json:"plans,omitempty"`
		Error string  `json:"error,omitempty"`
	}
	var r rev
	for _, role := range []string{"", RoleLeader, RoleWorker} {
		p, err := buildPlan(in, role)
		if err != nil {
			r = rev{Error: err.Error()}
			break
		}
		r.Plans = append(r.Plans, p)
	}
	b, err := json.Marshal(r)
	if err != nil {
		// Only reachable with unmarshalable values (none in our types); keep
		// the revision well-formed and distinct.
		b = []byte("marshal error: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:10])
}

// RevisionAnnotation is where the webhook stamps Revision on pods.
const RevisionAnnotation = v1beta1.AnnotationRevision
