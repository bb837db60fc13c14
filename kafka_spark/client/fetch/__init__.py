"""Reading: a partition's offset range fetched from its leader into Arrow batches (the next request written while
the current answer is decoded), and ListOffsets for many partitions at once."""
