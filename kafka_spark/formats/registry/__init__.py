"""The schema registry: its REST client (the only code that talks to a registry), connection settings, subject
name strategies and Confluent's wire framing of keys and values (magic byte, schema id, Protobuf indexes)."""
