"""The core every layer stands on: errors, payload encoding, items and their ordering meta."""
