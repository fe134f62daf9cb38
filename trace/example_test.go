package trace_test

import (
	"fmt"

	"github.com/reinhq/rein/trace"
)

// Every text a store keeps passes a Redactor first: here, the values of
// the environment's variables whose names look secret.
func ExampleRedactor() {
	r := trace.NewRedactor(trace.SecretValues([]string{"DB_PASSWORD=hunter2", "HOME=/home/me"})...)
	fmt.Println(r.Redact("mysql -phunter2 shop"))
	// Output:
	// mysql -p[redacted] shop
}
