// Package needsnew is a fixture module that needs dep v1.1.0.
package needsnew

import "example.com/gxfix/dep"

// Version says which version of dep it uses.
func Version() string { return "needsnew on " + dep.Version() }
