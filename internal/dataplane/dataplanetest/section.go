package dataplanetest

import (
	"maps"
	"net/http"
	"slices"
)

// children are the binds or servers (and server templates) of a section
// written with full_section=true: they replace the ones it had.
type children struct {
	items     *list
	templates []Object
}

// splitFull splits the body of a full-section write into the section's
// own fields and its children (maps keyed by name, as the API reads them
// with full_section=true), each checked against its schema.
func splitFull(body Object, child, childSchema string, backend bool) (Object, *children, *apiErr) {
	own := Object{}
	kids := &children{items: newList()}
	for k, v := range body {
		switch {
		case k == child || (backend && k == "server_templates"):
			if v == nil {
				continue
			}
			m, ok := v.(map[string]any)
			if !ok {
				return nil, nil, errf(http.StatusUnprocessableEntity, "validation failure list:\n%s in body must be of type object", k)
			}
			for _, n := range slices.Sorted(maps.Keys(m)) {
				o, ok := m[n].(map[string]any)
				if !ok {
					return nil, nil, errf(http.StatusUnprocessableEntity, "validation failure list:\n%s.%s in body must be of type object", k, n)
				}
				sch := childSchema
				if k == "server_templates" {
					sch = "server_template"
				}
				if err := validate(sch, o); err != nil {
					return nil, nil, &apiErr{http.StatusUnprocessableEntity, err.Error()}
				}
				if k == child {
					kids.items.put(n, o)
				} else {
					kids.templates = append(kids.templates, o)
				}
			}
		default:
			own[k] = v
		}
	}
	return own, kids, nil
}
