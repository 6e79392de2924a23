package search

import (
	"encoding/json"
	"fmt"
	"os"
)

// ReadWinner reads the model and the winner's strategy (the first of "top") of a file that
// 'tpsim plan --json' wrote (Planned's JSON).
func ReadWinner(path string) (model, strategy string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	var p struct {
		Model string `json:"model"`
		Top   []struct {
			Strategy string `json:"strategy"`
		} `json:"top"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return "", "", fmt.Errorf("--plan-json %s: %v (give the output of 'tpsim plan --json')", path, err)
	}
	if len(p.Top) == 0 || p.Top[0].Strategy == "" {
		return "", "", fmt.Errorf("--plan-json %s: no winner (its \"top\" is empty: the plan found no feasible strategy); give a plan with a winner, or --strategy", path)
	}
	return p.Model, p.Top[0].Strategy, nil
}
