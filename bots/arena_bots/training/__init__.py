"""Training kits (ARCHITECTURE §3): AlphaZero self-play for the one-head board games, deep
Q-learning for Coders Strike Back (seed 000), and the actor-critic (V-trace) kit for Smash the Code
(seed 003).

PyTorch is an optional extra (`arena[train]`) and is imported only inside this subpackage, so
`import arena_bots` never needs it. The AlphaZero modules, in the order of the loop:
  networks   the residual towers (Bobail, Pente) that export to the bot contract
  selfplay   batched self-play games through the project's MCTS, with their training targets
  augment    the board symmetries of a game, applied to encoded positions and policy targets
  buffer     the replay window over recent positions
  trainer    policy cross-entropy + value MSE on minibatches from the buffer
  evaluate   checkpoint tournaments against each other and the house bots, ratings and the plot
  run        the resumable loop and `train_alphazero`, the function the CLI calls
The DQN kit (`arena train dqn --game csb`):
  dqn        per-role Q-networks (angle and thrust heads), replay memory, epsilon, double-DQN update
  racing     batched CSB environments on the vectorised physics, with the seed's rewards
  dqn_run    the resumable loop, checkpoints evaluated against the house racer, `train_dqn`

The actor-critic kit (seed 003):
  environments  parallel Smash games stepped in batches, against the chain bot and in self-play
  vtrace        one-step and n-step V-trace targets and the actor-critic loss with its entropy bonus
  actor_critic  the resumable loop and `train_actor_critic` (networks.TwoTowerNet is its network)
"""
