// A test program, never shipped: Flux's kstatus library (sigs.k8s.io/cli-utils/pkg/kstatus)
// judges objects as `wait: true` on a Kustomization does. Reads a JSON array of objects on
// stdin, prints a JSON array of {status, message} (Current, InProgress, Failed, Terminating…).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading stdin:", err)
		os.Exit(2)
	}
	// Each object through Unstructured's own decoder: integers stay int64, as kstatus reads them.
	var objects []json.RawMessage
	if err := json.Unmarshal(raw, &objects); err != nil {
		fmt.Fprintln(os.Stderr, "stdin is not a JSON array of objects:", err)
		os.Exit(2)
	}
	out := make([]verdict, 0, len(objects))
	for _, o := range objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(o); err != nil {
			fmt.Fprintln(os.Stderr, "not a Kubernetes object:", err)
			os.Exit(2)
		}
		r, err := status.Compute(u)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kstatus:", err)
			os.Exit(1)
		}
		out = append(out, verdict{Status: string(r.Status), Message: r.Message})
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
