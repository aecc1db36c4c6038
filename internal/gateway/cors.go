package gateway

import (
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// corsPolicy is an HTTPRoute CORS filter as the model's policy (origins
// and header names in lower case; the API's default max age of 5
// seconds when none is given), and why it cannot be served ("" when it
// can: model.CORS.Valid).
func corsPolicy(f *gwv1.HTTPCORSFilter) (*model.CORS, string) {
	if f == nil {
		return nil, "cors is missing"
	}
	c := &model.CORS{MaxAge: int(f.MaxAge)}
	if c.MaxAge == 0 {
		c.MaxAge = 5
	}
	if f.AllowCredentials != nil {
		c.Credentials = *f.AllowCredentials
	}
	for _, o := range f.AllowOrigins {
		c.Origins = append(c.Origins, strings.ToLower(string(o)))
	}
	for _, m := range f.AllowMethods {
		c.Methods = append(c.Methods, string(m))
	}
	for _, h := range f.AllowHeaders {
		c.Headers = append(c.Headers, strings.ToLower(string(h)))
	}
	for _, h := range f.ExposeHeaders {
		c.Expose = append(c.Expose, strings.ToLower(string(h)))
	}
	if why := c.Valid(); why != "" {
		return nil, "cors: " + why
	}
	return c, ""
}
