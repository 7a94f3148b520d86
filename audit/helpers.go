package audit

import "slices"

func isExecution(r *Record) bool {
	return r.HookEvent == "PostToolUse" || r.HookEvent == "PostToolUseFailure"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
