// Command etcd is the etcd server, built from the pinned go.etcd.io/etcd/server/v3
// module: that module's go.mod has local replace directives, so `go install` of its
// main package fails and this wrapper stands in for it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
