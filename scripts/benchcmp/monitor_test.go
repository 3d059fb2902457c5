package main

import (
	"encoding/json"
	"testing"
)

func TestConnzCount(t *testing.T) {
	const body = `{"server_id":"X","num_connections":3,"connections":[
		{"cid":1,"subscriptions":2,"subscriptions_list":["bench.fan4.r0.s0","_INBOX.abc.*"]},
		{"cid":2,"subscriptions":0},
		{"cid":3,"subscriptions":2,"subscriptions_list":["bench.fan4.r0.s0","bench.fan4.r0.s0.more"]}]}`
	var cz connz
	if err := json.Unmarshal([]byte(body), &cz); err != nil {
		t.Fatal(err)
	}
	if got := cz.count("bench.fan4.r0.s0"); got != 2 {
		t.Errorf("count = %d, want 2 (exact subject only)", got)
	}
	if got := cz.count("bench.other"); got != 0 {
		t.Errorf("count of an absent subject = %d", got)
	}
}
