package config

import (
	"time"

	"github.com/leafbox/leafbox/core/auth"
)

// Auth converts authorization, accounts and no_auth_user; nil when
// none is configured, which means no authentication.
func (c *Config) Auth() *auth.Config {
	ac := &auth.Config{NoAuthUser: c.NoAuthUser}
	if a := c.Authorization; a != nil {
		ac.Token = a.Token
		if a.User != "" {
			ac.Users = append(ac.Users, auth.User{Name: a.User, Password: a.Password})
		}
		for _, u := range a.Users {
			ac.Users = append(ac.Users, u.authUser())
		}
	}
	for _, name := range sortedKeys(c.Accounts) {
		acc := auth.Account{Name: name}
		for _, u := range c.Accounts[name].Users {
			acc.Users = append(acc.Users, u.authUser())
		}
		ac.Accounts = append(ac.Accounts, acc)
	}
	if ac.Token == "" && len(ac.Users) == 0 && len(ac.Accounts) == 0 && ac.NoAuthUser == "" {
		return nil
	}
	return ac
}

func (u UserConfig) authUser() auth.User {
	au := auth.User{Name: u.User, Password: u.Password, Nkey: u.Nkey, Account: u.Account}
	if p := u.Permissions; p != nil {
		au.Permissions = &auth.Permissions{
			Publish:   p.Publish.authPermission(),
			Subscribe: p.Subscribe.authPermission(),
		}
		if r := p.AllowResponses; r != nil && r.Enabled {
			au.Permissions.Response = &auth.ResponsePermission{MaxMsgs: r.Max, Expires: time.Duration(r.Expires)}
		}
	}
	return au
}

func (p *SubjectPermission) authPermission() *auth.SubjectPermission {
	if p == nil {
		return nil
	}
	return &auth.SubjectPermission{Allow: append([]string(nil), p.Allow...), Deny: append([]string(nil), p.Deny...)}
}
