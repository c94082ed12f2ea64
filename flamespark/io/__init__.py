"""Files: event inputs, sink outputs, atomic writes, checkpoint claims."""
