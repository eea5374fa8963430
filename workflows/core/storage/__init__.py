"""What the engine stores and how: the ports (Store, Transport, Clock), write plans and the
shared writes every Store commits (``writes``), listings and tags, payloads, retention, chains
and the readable views of a run."""
