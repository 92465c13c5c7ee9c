"""deepum offline, on any machine: traces (format, validation, I/O, writer, summary), synthetic
training traces, the replay of a trace against a model of the UVM driver (simulator), the table tuner,
reports and timelines, and the cost calibrations the simulator charges."""
