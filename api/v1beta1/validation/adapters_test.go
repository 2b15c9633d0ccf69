package validation

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/api/v1beta1"
)

func TestValidateAdapters(t *testing.T) {
	p := field.NewPath("spec", "adapters")
	ok := []v1beta1.LoRAAdapter{{Name: "sql-lora", Source: "/mnt/models/adapters/sql"}, {Name: "org/chat:v1.2", Source: "org/chat-lora"}}
	assert.Empty(t, ValidateAdapters(&v1beta1.InferenceServiceSpec{Adapters: ok}))
	assert.Empty(t, ValidateAdapters(&v1beta1.InferenceServiceSpec{}))

	bad := []v1beta1.LoRAAdapter{
		{Name: "", Source: ""},
		{Name: "-x", Source: "/a b"},
		{Name: "sql", Source: "/a"},
		{Name: "sql", Source: strings.Repeat("x", 1025)},
	}
	assert.Equal(t, field.ErrorList{
		field.Required(p.Index(0).Child("name"), "the adapter's name, which requests use as the model"),
		field.Required(p.Index(0).Child("source"), "where the engine loads the adapter from (its lora_path)"),
		field.Invalid(p.Index(1).Child("name"), "-x", "must be 1-128 letters, digits or . _ : / -, starting with a letter or digit"),
		field.Invalid(p.Index(1).Child("source"), "/a b", "must not contain spaces or control characters"),
		field.Duplicate(p.Index(3).Child("name"), "sql"),
		field.TooLong(p.Index(3).Child("source"), "", 1024),
	}, ValidateAdapters(&v1beta1.InferenceServiceSpec{Adapters: bad}))

	many := make([]v1beta1.LoRAAdapter, MaxAdapters+1)
	for i := range many {
		many[i] = v1beta1.LoRAAdapter{Name: fmt.Sprintf("a%d", i), Source: "/a"}
	}
	assert.Equal(t, field.ErrorList{field.TooMany(p, MaxAdapters+1, MaxAdapters)}, ValidateAdapters(&v1beta1.InferenceServiceSpec{Adapters: many}))
}
