//go:build unix

package launch

import (
	"slices"
	"sort"
	"strings"

	"github.com/reinhq/rein/trace"
)

// Reserved reports whether --env may not pass name into a session: the
// variables the session sets itself (HOME, TMPDIR, PATH, the proxy's, the
// locale's directories), the loader's and rein's, and those that
// configure any of agents (which could make it skip rein's hook or its
// settings).
func Reserved(name string, agents ...Agent) bool {
	up := strings.ToUpper(name)
	switch up {
	case "HOME", "TMPDIR", "PATH", "PWD", "SHELL", "USER", "LOGNAME", "IS_SANDBOX", "NO_PROXY", "ALL_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY":
		return true
	}
	for _, prefix := range []string{"XDG_", "LD_", "REIN_", "NODE_OPTIONS", "BUN_"} {
		if strings.HasPrefix(up, prefix) {
			return true
		}
	}
	for _, a := range agents {
		if a.Reserved(name) {
			return true
		}
	}
	return false
}

// CredentialVars are the variables of env that hold a credential the
// session must not carry in, but for the model's keys: names that look
// secret, cloud and cluster configuration, agent sockets.
func CredentialVars(env []string, keys []string) []string {
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" || slices.Contains(keys, k) {
			continue
		}
		if IsCredential(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// credentialPrefixes are the families of variables that lead to a cloud's
// or a cluster's credentials without a secret-looking name (those with
// one, AWS_SECRET_ACCESS_KEY or AZURE_CLIENT_SECRET, are caught by it;
// AWS_REGION or AWS_CA_BUNDLE are not credentials).
var credentialPrefixes = []string{"AWS_ACCESS_KEY", "AWS_CONTAINER_CREDENTIALS", "AWS_WEB_IDENTITY", "AZURE_FEDERATED", "ARM_CLIENT_CERT",
	"GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CREDENTIALS", "CLOUDSDK_AUTH", "OP_SERVICE_ACCOUNT", "KUBECONFIG", "DOCKER_AUTH_CONFIG", "VAULT_"}

// credentialNames are single variables that lead to a credential.
var credentialNames = []string{"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "GH_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN",
	"NETRC", "GIT_ASKPASS", "SSH_ASKPASS", "NPM_TOKEN", "NODE_AUTH_TOKEN", "PYPI_TOKEN", "CARGO_REGISTRY_TOKEN"}

// IsCredential says whether a variable's name leads to a credential.
func IsCredential(k string) bool {
	if trace.SecretName(k) || slices.Contains(credentialNames, k) {
		return true
	}
	for _, p := range credentialPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// Env is a session's environment: the locale, terminal and PATH, the
// variables pass names, and the agent's own settings, which point it at
// its model m through the gateway with the placeholder key; a program
// (agent nil) gets the variables keys names as they are, and no
// gateway.
func Env(env []string, keys, pass []string, agent Agent, m Model, keyVar, placeholder string) []string {
	var out []string
	if agent != nil {
		// An agent's key stays out: its gateway holds it.
		pass = append(slices.Clone(pass), agent.ConfigVars()...)
	} else {
		pass = append(slices.Clone(keys), pass...)
	}
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if k == "LANG" || k == "TERM" || k == "PATH" || k == "COLORTERM" || strings.HasPrefix(k, "LC_") || slices.Contains(pass, k) {
			out = append(out, e)
		}
	}
	if agent != nil {
		out = append(out, agent.Env(m, keyVar, placeholder)...)
	}
	return out
}
