package app

import (
	"fmt"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/mqtt"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

// mqttBridgeSpecs maps the bridges.mqtt entries to the bridges the registry
// runs. A Spec's Config is the entry with its effective client id and
// session expiry, so a reload restarts a bridge only when one of them
// changed; New reads the password and TLS files and builds the bridge.
func mqttBridgeSpecs(cfg *config.Config) ([]bridge.Spec, error) {
	var specs []bridge.Spec
	if cfg.Bridges == nil {
		return nil, nil
	}
	for i := range cfg.Bridges.MQTT {
		entry := cfg.Bridges.MQTT[i]
		entry.ClientID = cfg.MQTTClientID(&entry)
		expiry := config.Duration(entry.MQTTSessionExpiry())
		entry.SessionExpiry = &expiry
		path := fmt.Sprintf("bridges.mqtt[%d]", i)
		specs = append(specs, bridge.Spec{
			Kind:    "mqtt",
			Name:    entry.Name,
			Account: entry.Account,
			Config:  entry,
			New: func() (bridge.Bridge, error) {
				c, err := mqttConfig(cfg, path, &entry)
				if err != nil {
					return nil, err
				}
				return mqtt.New(c)
			},
		})
	}
	return specs, nil
}

// mqttConfig converts one bridges.mqtt entry (with its client id and
// session expiry filled) to the bridge's configuration.
func mqttConfig(cfg *config.Config, path string, m *config.MQTTBridgeConfig) (mqtt.Config, error) {
	version, err := mqtt.ParseVersion(m.Version)
	if err != nil {
		return mqtt.Config{}, fmt.Errorf("%s.version: %w", path, err)
	}
	password, err := cfg.MQTTPassword(m)
	if err != nil {
		return mqtt.Config{}, fmt.Errorf("%s.password_file: %w", path, err)
	}
	c := mqtt.Config{
		Name:           m.Name,
		Server:         m.Server,
		Version:        version,
		ClientID:       m.ClientID,
		Username:       m.Username,
		Password:       password,
		CleanStart:     m.CleanStart,
		SessionExpiry:  m.MQTTSessionExpiry(),
		KeepAlive:      time.Duration(m.KeepAlive),
		ConnectTimeout: time.Duration(m.ConnectTimeout),
		ReconnectDelay: time.Duration(m.ReconnectDelay),
		RequestTimeout: time.Duration(m.RequestTimeout),
		ResponseTopic:  m.ResponseTopic,
		QueueLen:       m.QueueLen,
	}
	if m.TLS != nil {
		if c.TLS, err = cfg.RemoteTLS(path+".tls", m.TLS); err != nil {
			return mqtt.Config{}, err
		}
	}
	for _, r := range m.Inbound {
		c.Inbound = append(c.Inbound, mqtt.InboundRoute{From: r.From, To: r.To, QoS: r.QoSValue(), Store: r.Store})
	}
	for _, r := range m.Outbound {
		c.Outbound = append(c.Outbound, mqtt.OutboundRoute{From: r.From, StripPrefix: r.StripPrefix, To: r.To, QoS: r.QoSValue(), Retain: r.Retain,
			Stream: r.Stream, Durable: r.Durable})
	}
	return c, nil
}
