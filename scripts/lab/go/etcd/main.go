// Command etcd is the pinned etcd server: etcd's own main does nothing but call etcdmain.Main,
// and its main module cannot be built from the module proxy (see go.mod), so this one does.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
