package app

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/mqtt"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store/jetstream"
	"github.com/leafbox/leafbox/store/mqttstate"
)

// mqttState adapts store/mqttstate (one Store per account, in internal
// streams of the JetStream engine) to core/mqtt's State, so that MQTT
// sessions, their queued QoS 1/2 messages and retained messages survive a
// restart, kill -9 included. core/mqtt keeps no account in its State
// calls but the session's: the adapter remembers which account each
// client id's session is in, and finds a retained message's account in
// its header (Nmqtt-Account, absent for the global account).
type mqttState struct {
	stores map[string]*mqttstate.Store // by account

	mu    sync.Mutex
	owner map[string]string // client id → account
}

var _ mqtt.State = (*mqttState)(nil)

// openMQTTState opens the state of every configured account.
func openMQTTState(cfg *config.Config, js *jetstream.Engine, log *slog.Logger) (*mqttState, error) {
	accounts := []string{auth.GlobalAccount}
	if ac := cfg.Auth(); ac != nil {
		for _, a := range ac.Accounts {
			if a.Name != auth.GlobalAccount {
				accounts = append(accounts, a.Name)
			}
		}
	}
	s := &mqttState{stores: map[string]*mqttstate.Store{}, owner: map[string]string{}}
	for _, acc := range accounts {
		st, err := mqttstate.Open(mqttstate.Options{
			Backend: js, Account: acc, MaxQueued: cfg.MQTT.MaxQueue, MaxSessions: cfg.MQTT.MaxSessions,
			MaxRetained: cfg.MQTT.MaxRetained, MaxRetainedBytes: int64(cfg.MQTT.MaxRetainedBytes),
			Logger: log.With("subsystem", "mqtt", "account", acc),
		})
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("mqtt: state of account %s: %w", acc, err)
		}
		s.stores[acc] = st
	}
	return s, nil
}

// Close closes every account's store.
func (s *mqttState) Close() error {
	var errs []error
	for _, st := range s.stores {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

func accountOf(a string) string {
	if a == "" {
		return auth.GlobalAccount
	}
	return a
}

func (s *mqttState) store(account string) (*mqttstate.Store, error) {
	st := s.stores[accountOf(account)]
	if st == nil {
		return nil, fmt.Errorf("mqtt: no state for account %q (accounts added since the start need a restart)", account)
	}
	return st, nil
}

// of returns the store of the client's session.
func (s *mqttState) of(clientID string) (*mqttstate.Store, error) {
	s.mu.Lock()
	acc, ok := s.owner[clientID]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", mqttstate.ErrUnknownSession, clientID)
	}
	return s.store(acc)
}

// LoadSessions implements mqtt.State.
func (s *mqttState) LoadSessions() ([]mqtt.Session, error) {
	var out []mqtt.Session
	for acc, st := range s.stores {
		sessions, err := st.LoadSessions()
		if err != nil {
			return nil, err
		}
		for _, ss := range sessions {
			ms := mqtt.Session{ClientID: ss.ClientID, Version: ss.Version, ExpiryInterval: ss.ExpiryInterval, DisconnectedAt: ss.DisconnectedAt, Account: acc, User: ss.User}
			for _, sub := range ss.Subs {
				ms.Subs = append(ms.Subs, mqtt.Sub{Filter: sub.Filter, QoS: sub.QoS, NoLocal: sub.NoLocal, RetainAsPublished: sub.RetainAsPublished,
					RetainHandling: sub.RetainHandling, SubID: int(sub.SubID), Share: sub.Share})
			}
			s.mu.Lock()
			s.owner[ss.ClientID] = acc
			s.mu.Unlock()
			out = append(out, ms)
		}
	}
	return out, nil
}

// PutSession implements mqtt.State.
func (s *mqttState) PutSession(ms mqtt.Session) error {
	st, err := s.store(ms.Account)
	if err != nil {
		return err
	}
	s.mu.Lock()
	prev, had := s.owner[ms.ClientID]
	s.mu.Unlock()
	if had && prev != accountOf(ms.Account) {
		// The client id moved to another account: its old session goes.
		if old, err := s.store(prev); err == nil {
			_ = old.DeleteSession(ms.ClientID)
		}
	}
	ss := mqttstate.Session{ClientID: ms.ClientID, Version: ms.Version, ExpiryInterval: ms.ExpiryInterval, DisconnectedAt: ms.DisconnectedAt,
		Account: accountOf(ms.Account), User: ms.User}
	for _, sub := range ms.Subs {
		ss.Subs = append(ss.Subs, mqttstate.Sub{Filter: sub.Filter, QoS: sub.QoS, NoLocal: sub.NoLocal, RetainAsPublished: sub.RetainAsPublished,
			RetainHandling: sub.RetainHandling, SubID: uint32(sub.SubID), Share: sub.Share})
	}
	if err := st.PutSession(ss); err != nil {
		return err
	}
	s.mu.Lock()
	s.owner[ms.ClientID] = accountOf(ms.Account)
	s.mu.Unlock()
	return nil
}

// DeleteSession implements mqtt.State.
func (s *mqttState) DeleteSession(clientID string) error {
	st, err := s.of(clientID)
	if err != nil {
		return nil // never stored
	}
	if err := st.DeleteSession(clientID); err != nil && !errors.Is(err, mqttstate.ErrUnknownSession) {
		return err
	}
	s.mu.Lock()
	delete(s.owner, clientID)
	s.mu.Unlock()
	return nil
}

// toStore converts a message; its expiry, for mqttstate's sweeps, comes
// from the header's Mqtt-Message-Expiry.
func toStore(m mqtt.Msg) mqttstate.Msg {
	out := mqttstate.Msg{Topic: m.Topic, QoS: m.QoS, Retain: m.Retain, Header: m.Header, Payload: m.Payload, Time: m.Time}
	if v := proto.HeaderValue(m.Header, "Mqtt-Message-Expiry"); v != nil {
		if n, err := strconv.ParseUint(string(v), 10, 32); err == nil {
			out.Expiry = m.Time.Add(time.Duration(n) * time.Second)
		}
	}
	return out
}

func fromStore(m mqttstate.Msg) mqtt.Msg {
	return mqtt.Msg{Topic: m.Topic, QoS: m.QoS, Retain: m.Retain, Header: m.Header, Payload: m.Payload, Time: m.Time}
}

// Enqueue implements mqtt.State.
func (s *mqttState) Enqueue(clientID string, m mqtt.Msg) (uint64, error) {
	st, err := s.of(clientID)
	if err != nil {
		return 0, err
	}
	return st.Enqueue(clientID, toStore(m))
}

// Queue implements mqtt.State.
func (s *mqttState) Queue(clientID string, afterSeq uint64, max int) ([]mqtt.QueuedMsg, error) {
	st, err := s.of(clientID)
	if err != nil {
		return nil, nil
	}
	q, err := st.Queue(clientID, afterSeq, max)
	if err != nil {
		return nil, err
	}
	out := make([]mqtt.QueuedMsg, len(q))
	for i, m := range q {
		out[i] = mqtt.QueuedMsg{Seq: m.Seq, Msg: fromStore(m.Msg), Pubrec: m.Pubrec}
	}
	return out, nil
}

// Release implements mqtt.State.
func (s *mqttState) Release(clientID string, seq uint64) error {
	st, err := s.of(clientID)
	if err != nil {
		return err
	}
	if err := st.Release(clientID, seq); err != nil && !errors.Is(err, mqttstate.ErrUnknownMessage) {
		return err
	}
	return nil
}

// MarkPubrec implements mqtt.State.
func (s *mqttState) MarkPubrec(clientID string, seq uint64) error {
	st, err := s.of(clientID)
	if err != nil {
		return err
	}
	return st.MarkPubrec(clientID, seq)
}

// AddIncomingQoS2 implements mqtt.State.
func (s *mqttState) AddIncomingQoS2(clientID string, pid uint16) error {
	st, err := s.of(clientID)
	if err != nil {
		return err
	}
	return st.AddIncomingQoS2(clientID, pid)
}

// ReleaseIncomingQoS2 implements mqtt.State.
func (s *mqttState) ReleaseIncomingQoS2(clientID string, pid uint16) error {
	st, err := s.of(clientID)
	if err != nil {
		return err
	}
	return st.ReleaseIncomingQoS2(clientID, pid)
}

// IncomingQoS2 implements mqtt.State.
func (s *mqttState) IncomingQoS2(clientID string) ([]uint16, error) {
	st, err := s.of(clientID)
	if err != nil {
		return nil, nil
	}
	return st.IncomingQoS2(clientID)
}

// SetRetained implements mqtt.State: the message's account is in its
// header.
func (s *mqttState) SetRetained(topic string, m mqtt.Msg) error {
	st, err := s.store(string(proto.HeaderValue(m.Header, "Nmqtt-Account")))
	if err != nil {
		return err
	}
	return st.SetRetained(topic, toStore(m))
}

// Retained implements mqtt.State: every account's matches (core/mqtt
// keeps those of the subscriber's account).
func (s *mqttState) Retained(filter string) ([]mqtt.Msg, error) {
	var out []mqtt.Msg
	for _, st := range s.stores {
		msgs, err := st.Retained(filter)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			out = append(out, fromStore(m))
		}
	}
	return out, nil
}
