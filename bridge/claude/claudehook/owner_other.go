//go:build !unix

package claudehook

import "io/fs"

// fileOwner is not known here: the folder's mode is all that is checked.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }
