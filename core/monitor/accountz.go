package monitor

import (
	"fmt"
	"slices"
	"time"
)

// Accountz is the /accountz document: the account names, or with acc=NAME
// the details of one account.
type Accountz struct {
	ID            string       `json:"server_id"`                // ID is the server's id.
	Now           time.Time    `json:"now"`                      // Now is the time of the snapshot.
	SystemAccount string       `json:"system_account,omitempty"` // SystemAccount names the system account, if any.
	Accounts      []string     `json:"accounts,omitempty"`       // Accounts lists the account names, sorted (without acc).
	Account       *AccountInfo `json:"account_detail,omitempty"` // Account describes the selected account (acc).
}

// AccountInfo describes one account in /accountz. leafbox configures
// accounts statically, so an account is never expired and always complete.
type AccountInfo struct {
	AccountName string        `json:"account_name"`            // AccountName is the account's name.
	IsSystem    bool          `json:"is_system,omitempty"`     // IsSystem reports the system account.
	Expired     bool          `json:"expired"`                 // Expired is always false.
	Complete    bool          `json:"complete"`                // Complete is always true.
	JetStream   bool          `json:"jetstream_enabled"`       // JetStream reports JetStream use by the account.
	LeafCnt     int           `json:"leafnode_connections"`    // LeafCnt is the number of leafnode connections.
	ClientCnt   int           `json:"client_connections"`      // ClientCnt is the number of client connections.
	SubCnt      uint32        `json:"subscriptions"`           // SubCnt is the number of subscriptions.
	Sublist     *SublistStats `json:"sublist_stats,omitempty"` // Sublist are the account's index statistics.
}

// buildAccountz answers /accountz for account ("" lists all accounts).
func buildAccountz(p Provider, now time.Time, account string) (*Accountz, error) {
	az := &Accountz{ID: p.ServerID(), Now: now.UTC()}
	if v := p.Varz(); v != nil {
		az.SystemAccount = v.SystemAccount
	}
	names := slices.Clone(p.Accounts())
	if account == "" {
		slices.Sort(names)
		az.Accounts = names
		return az, nil
	}
	if !slices.Contains(names, account) {
		//lint:ignore ST1005 nats-server's wording, kept for clients that match it.
		return nil, fmt.Errorf("Account %s does not exist", account)
	}
	stats := p.SublistStats(account)
	info := &AccountInfo{
		AccountName: account,
		IsSystem:    account == az.SystemAccount,
		Complete:    true,
		SubCnt:      stats.NumSubs,
		Sublist:     &stats,
	}
	for _, c := range p.Connections(ConnOpen, false) {
		if c.Account != account {
			continue
		}
		if c.Kind == "Leafnode" {
			info.LeafCnt++
		} else {
			info.ClientCnt++
		}
	}
	if js, ok := p.(JetStreamProvider); ok {
		opts := JszOptions{Account: account, Accounts: true}
		opts.normalize()
		if jz, err := js.Jsz(opts); err == nil && jz != nil && !jz.Disabled {
			for _, d := range jz.AccountDetails {
				info.JetStream = info.JetStream || d.Name == account
			}
		}
	}
	az.Account = info
	return az, nil
}
