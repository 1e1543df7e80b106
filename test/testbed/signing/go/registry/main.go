// Test-bed build recipe, never shipped: go-containerregistry's in-memory
// registry with its OCI 1.1 referrers API switched on (its own cmd/registry
// leaves it off, and zot is not served by the module proxy). Loopback only.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	port := flag.Int("port", 5060, "loopback port to listen on")
	flag.Parse()
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving the OCI 1.1 referrers registry on 127.0.0.1:%d", *port)
	s := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler:           registry.New(registry.WithReferrersSupport(true)),
	}
	log.Fatal(s.Serve(listener))
}
