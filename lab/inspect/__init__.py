"""What the GPU did and can do: the grid map, occupancy (+ per-arch limits), the doctor. Data only."""
